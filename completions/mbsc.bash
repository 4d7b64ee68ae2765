# SPDX-License-Identifier: ISC
# shellcheck shell=bash
# Bash completion for the mbsc programs: secure_master, secure_slave,
# mbsc-keygen and mbsc-gateway.
#
# make install puts this file in bash-completion's directory under the
# name of each program: bash-completion loads it for whichever program is
# completed first, and it registers them all.  It needs bash alone (no
# bash-completion helper), so that it also works sourced by hand:
# . completions/mbsc.bash
#
# The options come from each program's own --help (read once per shell), so
# they are never out of date; what follows an option is completed from the
# tables below: key files, cipher names, tables and formats.
#
# Another program: a function _mbsc_value_<name> (its name with "_" for
# "-") that completes what follows its options, an entry in
# _mbsc_value_shorts if it has short options with a value, its name on the
# `complete` line at the end, and its name in Makefile.am's completion_names.

_mbsc_ciphers="chacha20 trivium rabbit enocoro128v2"
_mbsc_formats="uint16 int16 hex int32 int uint32 float"
_mbsc_tables="0 1 3 4 coils discrete-inputs input-registers holding-registers"

# Short options that take a value, per program (secure_master's mbpoll ones).
declare -gA _mbsc_value_shorts=([secure_master]="a r c t l")
# The long options of each program, from its --help.
declare -gA _mbsc_option_cache=()

_mbsc_long_options() {
    local prog=$1
    if [[ -z ${_mbsc_option_cache[$prog]+set} ]]; then
        _mbsc_option_cache[$prog]=$(LC_ALL=C "$prog" --help 2>/dev/null |
            grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ')
    fi
    printf '%s' "${_mbsc_option_cache[$prog]}"
}

# COMPREPLY from a word list, for the current word.
_mbsc_words() {
    local IFS=$' \t\n'
    # shellcheck disable=SC2207 # compgen's words are one per line, no spaces
    COMPREPLY=($(compgen -W "$*" -- "$cur"))
}

# A comma-separated list (--ciphers a,b,c): the item after the last comma.
_mbsc_list() {
    local IFS=$' \t\n' head=${cur%"${cur##*,}"}
    # shellcheck disable=SC2207
    COMPREPLY=($(compgen -P "$head" -W "$*" -- "${cur##*,}"))
    compopt -o nospace 2>/dev/null
}

# File names: "private" leaves out *.pub (a private key is never one),
# "public" offers only *.pub, "any" every file; directories always.
_mbsc_files() {
    local IFS=$'\n'
    case $1 in
    private) COMPREPLY=($(compgen -f -X '*.pub' -- "$cur")) ;;
    public) COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X '!*.pub' -- "$cur")) ;;
    *) COMPREPLY=($(compgen -f -- "$cur")) ;;
    esac
    compopt -o filenames 2>/dev/null
}

# -t T[:FORMAT]: a table, then after the colon a format.
_mbsc_table() {
    local IFS=$' \t\n'
    if [[ $cur == *:* ]]; then
        # shellcheck disable=SC2207
        COMPREPLY=($(compgen -P "${cur%%:*}:" -W "$_mbsc_formats" -- "${cur#*:}"))
    else
        _mbsc_words "$_mbsc_tables"
    fi
}

# What follows an option: 0 if completed (or nothing can be guessed), 1 if
# the option takes no value.
_mbsc_value_secure_master() {
    case $1 in
    --key) _mbsc_files private ;;
    --peer) _mbsc_files public ;;
    --psk) _mbsc_files any ;;
    --cipher) _mbsc_words "$_mbsc_ciphers" ;;
    --ciphers) _mbsc_list "$_mbsc_ciphers" ;;
    --format) _mbsc_words "$_mbsc_formats" ;;
    --word-order) _mbsc_words big little ;;
    --table | -t) _mbsc_table ;;
    --connect | --unit | -a | --timeout | --count | --interval | -l | --reference | -r | \
        --number | -c | --poll | --read-* | --write-*) ;;
    *) return 1 ;;
    esac
}

_mbsc_value_secure_slave() {
    case $1 in
    --key) _mbsc_files private ;;
    --authorized | --policy | --psk) _mbsc_files any ;;
    --ciphers) _mbsc_list "$_mbsc_ciphers" ;;
    --listen | --handshake-timeout | --max-* | --idle-timeout | --log-interval) ;;
    *) return 1 ;;
    esac
}

_mbsc_value_mbsc_gateway() {
    case $1 in
    --key) _mbsc_files private ;;
    --peer) _mbsc_files public ;;
    --authorized | --policy | --psk | --config | --control) _mbsc_files any ;;
    --cipher) _mbsc_words "$_mbsc_ciphers" ;;
    --ciphers) _mbsc_list "$_mbsc_ciphers" ;;
    --log-level) _mbsc_words debug info warning ;;
    --listen | --upstream | --route | --max-* | --*-timeout | --reconnect-max) ;;
    *) return 1 ;;
    esac
}

# mbsc-keygen has no option with a value: every word but an option is PATH.
_mbsc_value_mbsc_keygen() {
    return 1
}

# The logical words before the cursor, "--opt=value" and "-tVALUE" split
# into option (prev) and value (cur); eq is what stands before the value in
# the word being completed ("--opt=", "-t").
_mbsc_split() {
    local line=${COMP_LINE:0:COMP_POINT} words letter
    read -ra words <<<"$line"
    if [[ -z $line || $line == *[[:space:]] ]]; then
        cur= prev=${words[${#words[@]} - 1]-}
    else
        cur=${words[${#words[@]} - 1]} prev=${words[${#words[@]} - 2]-}
    fi
    eq=
    if [[ $cur == --*=* ]]; then
        eq=${cur%%=*}= prev=${cur%%=*} cur=${cur#*=}
    elif [[ $cur == -[!-]?* ]]; then
        letter=${cur:1:1}
        if [[ " ${_mbsc_value_shorts[$name]-} " == *" $letter "* ]]; then
            eq=${cur:0:2} prev=${cur:0:2} cur=${cur:2}
        fi
    fi
}

# Readline replaces only what follows the last of COMP_WORDBREAKS ("=", ":"
# by default) in the word: cut that much off each completion.
_mbsc_trim() {
    local full=$eq$cur cut= i c
    for ((i = ${#full} - 1; i >= 0; i--)); do
        if [[ $COMP_WORDBREAKS == *"${full:i:1}"* ]]; then
            cut=${full:0:i+1}
            break
        fi
    done
    for i in "${!COMPREPLY[@]}"; do
        c=$eq${COMPREPLY[i]}
        COMPREPLY[i]=${c#"$cut"}
    done
}

_mbsc_complete() {
    local prog=${COMP_WORDS[0]} name cur prev eq
    name=${prog##*/}
    name=${name//-/_}
    COMPREPLY=()
    _mbsc_split
    if [[ -n $eq || $prev == -* ]] && "_mbsc_value_$name" "$prev"; then
        _mbsc_trim
        return 0
    fi
    if [[ $name == mbsc_gateway && ${COMP_LINE:0:COMP_POINT} =~ ^[^[:space:]]+[[:space:]]+status[[:space:]] ]]; then
        # "mbsc-gateway status" has options of its own.
        [[ $cur == -* ]] && _mbsc_words --control --json --prometheus
    elif [[ $cur == -* ]]; then
        _mbsc_words "$(_mbsc_long_options "$prog")"
    elif [[ $name == mbsc_keygen ]]; then
        _mbsc_files private
    elif [[ $name == mbsc_gateway && ($prev == */mbsc-gateway || $prev == mbsc-gateway) ]]; then
        # The first word: the mode, or the status command.
        _mbsc_words server client status
    fi
    _mbsc_trim
    return 0
}

complete -F _mbsc_complete secure_master secure_slave mbsc-keygen mbsc-gateway
