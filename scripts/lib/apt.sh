# Sourced by the setup scripts: `apt_install WHO PACKAGE...` installs Debian packages with
# apt-get, as root or through password-less sudo; returns 1 with the reason on stderr,
# prefixed by WHO, when it cannot run apt-get at all. apt-get's own failure is its status.
apt_install() {
  local who=$1
  shift
  if ! command -v apt-get >/dev/null; then
    echo "$who: no apt-get here: cannot install $*" >&2
    return 1
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      echo "$who: not root and no password-less sudo: cannot run apt-get" >&2
      return 1
    fi
  fi
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >&2
}
