# Source this to put the carried peer tools (bowtie, bwa, blastn, parasail,
# samtools) on PATH and their libraries on LD_LIBRARY_PATH:
#
#   source benchmarks/env.sh [ROOT]
#
# ROOT defaults to $GSEEK_PEERS_ROOT, else benchmarks/peers/root next to this
# file. Where ROOT is missing but benchmarks/peers/bundle/peers-root.tar.xz is
# there (the GPU machine: carry `benchmarks/peers/bundle`), it is unpacked first.
# Libraries under ROOT/fallback/SONAME/ are added only where the host's
# `ldconfig -p` lacks that soname, so a host's own base libraries win.
# Sourcing twice adds nothing twice. Exports GSEEK_PEERS_ROOT.

_gseek_peers_env() {
    local here root bundle d so paths=""
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    root=${1:-${GSEEK_PEERS_ROOT:-$here/peers/root}}
    bundle=$(dirname "$root")/bundle/peers-root.tar.xz
    if [[ ! -d $root/usr/bin && -f $bundle ]]; then
        mkdir -p "$(dirname "$root")" &&
            tar -C "$(dirname "$root")" -xJf "$bundle" ||
            { echo "env.sh: cannot unpack $bundle" >&2; return 1; }
        # the archive holds a folder named root/
        [[ $(basename "$root") == root ]] || mv "$(dirname "$root")/root" "$root"
    fi
    if [[ ! -d $root/usr/bin ]]; then
        echo "env.sh: no peer tools at $root (run benchmarks/fetch_peers.sh, or carry benchmarks/peers/bundle)" >&2
        return 1
    fi
    root=$(cd "$root" && pwd)
    paths="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu:$root/usr/lib/ncbi-blast+"
    local cache
    cache=$({ command -v ldconfig >/dev/null && ldconfig -p; } 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
    for d in "$root"/fallback/*/; do
        [[ -d $d ]] || continue
        so=$(basename "$d")
        grep -q "^[[:space:]]*$so " <<<"$cache" || paths="$paths:${d%/}"
    done
    case ":${PATH:-}:" in *":$root/usr/bin:"*) ;; *) export PATH="$root/usr/bin${PATH:+:$PATH}" ;; esac
    case ":${LD_LIBRARY_PATH:-}:" in
        *":$root/usr/lib/ncbi-blast+"*) ;;
        *) export LD_LIBRARY_PATH="$paths${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
    export GSEEK_PEERS_ROOT=$root
}
_gseek_peers_env "$@"
_gseek_peers_rc=$?
unset -f _gseek_peers_env
# shellcheck disable=SC2317  # return when sourced, exit when run
return $_gseek_peers_rc 2>/dev/null || exit $_gseek_peers_rc
