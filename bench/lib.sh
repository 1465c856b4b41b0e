# shellcheck shell=bash
# Source from the bench scripts: their shared helpers.

# median [EMPTY]: the median of the numbers on standard input, one a line
# (the mean of the two middle ones for an even count); EMPTY (default
# "nan", which printf and awk still take for a number) when there are none.
median() {
	sort -g | awk -v none="${1:-nan}" '{ v[NR] = $1 } END { if (!NR) { print none; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# splice_block NAME BLOCK MD: put the file
# BLOCK, which begins with a "<!-- NAME:begin" line and ends with
# "<!-- NAME:end -->", in place of MD's block between those markers, or
# append it to MD when MD has none.
splice_block() {
	local name=$1 block=$2 md=$3 tmp
	if [ -f "$md" ] && grep -q "^<!-- $name:begin" "$md"; then
		tmp=$(mktemp "$md.XXXXXX") || return 1
		awk -v f="$block" -v b="^<!-- $name:begin" -v e="^<!-- $name:end" '
			$0 ~ b { while ((getline l < f) > 0) print l; skip = 1; next }
			$0 ~ e { skip = 0; next } !skip' "$md" > "$tmp" && cat "$tmp" > "$md"
		rm -f "$tmp"
	else
		{ [ -f "$md" ] && echo; cat "$block"; } >> "$md"
	fi
}
