/* SPDX-License-Identifier: BSD-2-Clause */
/* C++ names as people read them. */
#ifndef GPUBPF_DEMANGLE_H
#define GPUBPF_DEMANGLE_H

/*
 * The demangled form of a mangled C++ name ("_Z..."), in a malloc'd string
 * to free; NULL when name is not one (or cannot be demangled).
 */
char *demangle(const char *name);

#endif
