/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Symbolising native (user-space) addresses of live processes: the
 * mapping that holds an address (/proc/PID/maps, cached per process and
 * read again when an address falls outside the known mappings), the
 * mapped file (through /proc/PID/root, so other mount namespaces work),
 * and its ELF function symbols (cached per file), C++ names demangled.
 */
#ifndef GPUBPF_NATIVE_SYM_H
#define GPUBPF_NATIVE_SYM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct nsym;    /* opaque: caches per process and per file */

struct nsym *nsym_new(void);
void nsym_free(struct nsym *s);
/*
 * Name address addr of process pid into buf:
 *   "symbol+0xoff (libfoo.so)"   a function symbol holds it
 *   "0xvaddr (libfoo.so)"        a mapped file without a symbol for it
 *                                 (the address as in the file, for addr2line)
 *   "0xaddr ([vdso])", "0xaddr"  not a file (anonymous memory, JIT code)
 * ret_addr: addr is a return address, looked up at addr - 1 (a call may
 * be the last instruction of its function).  Returns 1 when a symbol named
 * it, 0 when not, -ENOMEM.
 */
int nsym_name(struct nsym *s, pid_t pid, uint64_t addr, int ret_addr, char *buf, size_t len);
/* Forget process pid's mappings (it exited, or exec'd). */
void nsym_forget(struct nsym *s, pid_t pid);
/* Bytes the caches hold, and the files whose symbols are loaded. */
size_t nsym_mem(const struct nsym *s, size_t *files);

#endif
