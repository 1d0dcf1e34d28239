# bash completion for switchctl(1)                          -*- shell-script -*-
#
# Installed as $(PREFIX)/share/bash-completion/completions/switchctl; it also
# works on its own (`source switchctl.bash`), without the bash-completion
# package.
#
# Switch keys come from the running daemon (`switchctl --json list`, on the
# --socket given earlier on the line, if any); when it cannot be reached, from
# the [key] section headers in $SWITCHCTL_COMPLETION_CONFDIR/switches.d/*.conf
# (default /etc/switchd). Keys match ^[a-z][a-z0-9.-]*$, so the JSON is parsed
# with grep and sed.

_switchctl_commands='list get is-on set on off toggle reset watch history lock unlock disable enable apply confirm revert why status reload backup help'

# Prints the switch keys, one per line. $1: the --socket argument, or empty.
_switchctl_keys() {
  local socket=$1 out
  local -a cmd=(switchctl)
  [[ -n $socket ]] && cmd+=(--socket "$socket")
  cmd+=(--json list)
  # A daemon that hangs must not hang the shell.
  if command -v timeout >/dev/null 2>&1; then
    cmd=(timeout 2 "${cmd[@]}")
  fi
  if out=$("${cmd[@]}" 2>/dev/null) && [[ $out == *'"key"'* ]]; then
    printf '%s\n' "$out" |
      grep -oE '"key"[[:space:]]*:[[:space:]]*"[a-z][a-z0-9.-]*"' |
      sed -E 's/.*"([a-z][a-z0-9.-]*)"$/\1/' | sort -u
    return
  fi
  local dir=${SWITCHCTL_COMPLETION_CONFDIR:-/etc/switchd}/switches.d f
  for f in "$dir"/*.conf; do
    [[ -f $f && -r $f ]] || continue
    # `[key]`, white space allowed around the name as the daemon's parser does.
    sed -n 's/^[[:space:]]*\[[[:space:]]*\([a-z][a-z0-9.-]*\)[[:space:]]*\][[:space:]]*$/\1/p' "$f"
  done 2>/dev/null | sort -u
}

_switchctl() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=${COMP_WORDS[COMP_CWORD - 1]}
  local i word socket='' command='' npos=0
  COMPREPLY=()

  # `--name=VALUE`: bash splits it at `=` (COMP_WORDBREAKS) into three words.
  if [[ $prev == '=' && $COMP_CWORD -ge 2 ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  elif [[ $cur == '=' ]]; then
    cur=''
  fi

  # Walk the words before the cursor: global options, the command, and how
  # many positional arguments the command already has.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    case $word in
      --socket)
        if [[ ${COMP_WORDS[i + 1]} == '=' ]]; then ((i++)); fi
        if ((i + 1 < COMP_CWORD)); then socket=${COMP_WORDS[i + 1]}; fi
        ((i++))
        continue
        ;;
      --socket=*)
        socket=${word#--socket=}
        continue
        ;;
      --since | --limit | --before | --reason | --checked | --if-revision | --user | --for | --until | --confirm)
        # Its value: the next word, or the one after a split-off `=`.
        if [[ ${COMP_WORDS[i + 1]} == '=' ]]; then ((i++)); fi
        ((i++))
        continue
        ;;
      -*) continue ;;
    esac
    if [[ -z $command ]]; then
      command=$word
    else
      ((npos++))
    fi
  done
  # A leading ~ is expanded by the shell when the command runs, not here.
  [[ $socket == '~'/* ]] && socket=$HOME/${socket#'~/'}

  # The value of an option.
  case $prev in
    --socket)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0
      ;;
    --checked)
      COMPREPLY=($(compgen -W 'on off' -- "$cur"))
      return 0
      ;;
    --user)
      COMPREPLY=($(compgen -u -- "$cur"))
      return 0
      ;;
    --since | --limit | --before | --reason | --if-revision | --for | --until | --confirm)
      return 0 # a number, a span, a time or free text: nothing to offer
      ;;
  esac

  # Options every command takes, before or after it.
  local global='--socket --user --json --no-ask-password --help'
  if [[ -z $command ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$global --version" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$_switchctl_commands" -- "$cur"))
    fi
    return 0
  fi

  local options='' keys=no
  case $command in
    list | get | is-on | reset | unlock | enable | apply | confirm | revert | why)
      ((npos == 0)) && keys=yes
      ;;
    on | off | toggle)
      options='--if-revision --for --until --confirm --no-ask'
      ((npos == 0)) && keys=yes
      ;;
    set)
      options='--if-revision --for --until --confirm --no-ask'
      if ((npos == 0)); then
        keys=yes
      elif ((npos == 1)); then
        COMPREPLY=($(compgen -W 'on off' -- "$cur"))
        return 0
      fi
      ;;
    watch)
      options='--since'
      keys=yes # any number of patterns
      ;;
    history)
      options='--limit --before'
      ((npos == 0)) && keys=yes
      ;;
    lock)
      options='--reason --checked --for --until'
      ((npos == 0)) && keys=yes
      ;;
    disable)
      options='--reason --for --until'
      ((npos == 0)) && keys=yes
      ;;
    help)
      ((npos == 0)) && COMPREPLY=($(compgen -W "$_switchctl_commands" -- "$cur"))
      return 0
      ;;
    backup)
      if [[ $cur != -* ]]; then
        if ((npos == 0)); then
          compopt -o filenames 2>/dev/null
          COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
      fi
      ;;
    status | reload) ;;
    *) return 0 ;; # an unknown command
  esac

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$options $global" -- "$cur"))
  elif [[ $keys == yes ]]; then
    COMPREPLY=($(compgen -W "$(_switchctl_keys "$socket")" -- "$cur"))
  fi
  return 0
}

complete -F _switchctl switchctl
