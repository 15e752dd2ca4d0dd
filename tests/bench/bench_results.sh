# shellcheck shell=bash
# Sourced after bench_common.sh by the bench drivers that print a table
# (run_transfer_bench.sh, run_proxy_bench.sh): reading $results, the JSON lines
# that bench_common.sh's record kept, back.
: "${results:?bench_common.sh sets results}"

# json_get LINE KEY: the value of a flat JSON member (quotes stripped).
json_get() {
    sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"
}

# matches LINE KEY=VALUE...: whether a result line holds all the given members.
matches() {
    local line=$1 pattern key value
    shift
    for pattern in "$@"; do
        key=${pattern%%=*}
        value=${pattern#*=}
        [[ $line == *"\"$key\":$value,"* || $line == *"\"$key\":\"$value\""* ]] || return 1
    done
}

# find_line KEY=VALUE...: of the result lines holding all the given members, the one
# with the highest gbps (or rps): the best of the repeated runs.
find_line() {
    local line best="" best_rate=-1 rate
    while IFS= read -r line; do
        matches "$line" "$@" || continue
        rate=$(json_get "$line" gbps)
        rate=${rate:-$(json_get "$line" rps)}
        if awk -v a="${rate:-0}" -v b="$best_rate" 'BEGIN { exit !(a + 0 > b + 0) }'; then
            best=$line
            best_rate=${rate:-0}
        fi
    done <"$results"
    echo "$best"
}

# median: the median of the numbers on standard input, one a line, as %.2f ("-" for none).
median() {
    sort -g | awk '{ r[n++] = $1 }
        END { if (!n) { print "-"; exit }
              printf "%.2f", n % 2 ? r[(n - 1) / 2] : (r[n / 2 - 1] + r[n / 2]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
fmt() { awk -v a="$1" -v d="$2" 'BEGIN { if (a == "" || a + 0 < 0) print "-"; else printf "%." d "f", a }'; }
