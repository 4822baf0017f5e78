#!/usr/bin/env bash
# Fetch the Debian peer tools (bowtie, bwa, blastn, parasail, samtools) into an
# ignored folder that can be carried to the GPU machine, which has no network.
#
#   benchmarks/fetch_peers.sh [--dest DIR] [--no-data] [--no-pack] [--quiet]
#
# Layout under DIR (default benchmarks/peers/, git-ignored):
#   pkgs/                   tool and library .debs as downloaded (a cache; never carried)
#   root/                   the packages unpacked with dpkg -x and pruned (used here)
#   root/fallback/SONAME/   base-system libraries that a minimal host may lack;
#                           env.sh adds one only when `ldconfig -p` lacks its soname
#   bundle/peers-root.tar.xz  root/ packed: carry `benchmarks/peers/bundle` (~16 MiB);
#                           env.sh unpacks it on first use where root/ is missing
#   debs/                   data packages (bowtie-examples, ...) for the dataset
#                           recipes' --debs; ~40 MiB, carry only when a recipe needs them
#
# Idempotent: a package already in pkgs/ or debs/ is not downloaded again, and
# root/ and the bundle are rebuilt only when the set of .debs changes.
# Needs apt-get (run `apt-get update` once first), dpkg-deb, ldd, objdump
# (binutils), tar and xz. Verifies every tool runs from root/ before it ends.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dest=$here/peers
want_data=1
want_pack=1
quiet=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --dest) dest=$2; shift 2 ;;
        --dest=*) dest=${1#--dest=}; shift ;;
        --no-data) want_data=0; shift ;;
        --no-pack) want_pack=0; shift ;;
        --quiet) quiet=1; shift ;;
        -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fetch_peers.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# The tools, and the libraries they need that a minimal Debian/Ubuntu lacks.
TOOLS=(bowtie bwa ncbi-blast+ parasail samtools)
LIBS=(libparasail8 libhts3 libhtscodecs2 libdeflate0 libpcre3 liblmdb0
      libmbedtls14 libmbedcrypto7 libmbedx509-1)
# Base-system libraries assumed present on the host; each is also shipped in
# root/fallback/ and used only where the host lacks it (see env.sh).
FALLBACK=(libgomp1 libncurses6 libtinfo6 libbz2-1.0 liblzma5)
# Data packages read by the dataset recipes (--debs benchmarks/peers/debs).
DATA=(bowtie-examples bowtie2-examples ragout-examples kleborate-examples)
# Of ncbi-blast+, only these programs are kept (the rest is ~5 MiB of extras).
BLAST_KEEP=(blastn blastp blastx tblastn tblastx makeblastdb blastdbcmd
            blast_formatter dustmasker segmasker windowmasker)
# Bump when the pruning below changes, so root/ is rebuilt.
LAYOUT_VERSION=1

say() { [[ $quiet == 1 ]] || echo "$@"; }

# download PKG... into DIR unless a .deb of that package is already there
download() {
    local dir=$1; shift
    mkdir -p "$dir"
    local missing=() p
    for p in "$@"; do
        compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        say "downloading into $dir: ${missing[*]}"
        if ! (cd "$dir" && apt-get download "${missing[@]}" 2> >(grep -v 'unsandboxed' >&2) >/dev/null); then
            echo "fetch_peers.sh: apt-get download failed; run 'apt-get update' first?" >&2
            exit 1
        fi
    fi
}

libdirs() {  # the library folders of an unpacked tree, in LD_LIBRARY_PATH order
    local r=$1
    echo "$r/usr/lib/x86_64-linux-gnu:$r/lib/x86_64-linux-gnu:$r/usr/lib/ncbi-blast+"
}

download "$dest/pkgs" "${TOOLS[@]}" "${LIBS[@]}" "${FALLBACK[@]}"

# ---------------------------------------------------------------- unpack + prune
stamp=$( { echo "layout $LAYOUT_VERSION"; (cd "$dest/pkgs" && ls -1 ./*.deb); } | sha256sum | cut -c1-16)
root=$dest/root
if [[ -f $root/.stamp && $(cat "$root/.stamp") == "$stamp" ]]; then
    say "root/ is up to date ($stamp)"
else
    say "unpacking into $root"
    tmp=$dest/.root.tmp-$$
    rm -rf "$tmp"
    mkdir -p "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    fb_tmp=$tmp/.fallback-unpack
    for deb in "$dest"/pkgs/*.deb; do
        pkg=$(dpkg-deb -f "$deb" Package)
        if [[ " ${FALLBACK[*]} " == *" $pkg "* ]]; then
            mkdir -p "$fb_tmp/$pkg" && dpkg -x "$deb" "$fb_tmp/$pkg"
        else
            dpkg -x "$deb" "$tmp"
        fi
    done
    # prune: documentation, debug builds, htslib's network plugins, blast extras
    rm -rf "$tmp/usr/share" "$tmp/usr/sbin" "$tmp/usr/lib/x86_64-linux-gnu/htslib"
    rm -f "$tmp"/usr/bin/*-debug
    blast_deb=$(ls "$dest"/pkgs/ncbi-blast+_*.deb)
    while read -r f; do
        name=$(basename "$f")
        [[ " ${BLAST_KEEP[*]} " == *" $name "* ]] || rm -f "$tmp/usr/bin/$name"
    done < <(dpkg-deb -c "$blast_deb" | awk '{print $6}' | grep '^\./usr/bin/.')
    # base-system fallbacks: root/fallback/SONAME/SONAME (+ its real file)
    for dir in "$fb_tmp"/*; do
        for so in "$dir"/lib/x86_64-linux-gnu/*.so.* "$dir"/usr/lib/x86_64-linux-gnu/*.so.*; do
            [[ -L $so || -f $so ]] || continue
            soname=$(objdump -p "$so" 2>/dev/null | awk '/SONAME/{print $2}') || true
            [[ -n $soname && $(basename "$so") == "$soname" ]] || continue
            mkdir -p "$tmp/fallback/$soname"
            cp -L "$so" "$tmp/fallback/$soname/$soname"
        done
    done
    rm -rf "$fb_tmp"
    # drop shared libraries (and fallbacks) that no kept program loads
    fb_path=$(printf '%s:' "$tmp"/fallback/*)
    used=$tmp/.used
    : >"$used"
    missing=0
    for exe in "$tmp"/usr/bin/*; do
        [[ -f $exe && $(head -c4 "$exe" | tail -c3) == ELF ]] || continue
        out=$(LD_LIBRARY_PATH="$(libdirs "$tmp"):${fb_path%:}" ldd "$exe")
        if grep -q 'not found' <<<"$out"; then
            echo "fetch_peers.sh: $(basename "$exe") lacks: $(grep 'not found' <<<"$out" | awk '{print $1}' | tr '\n' ' ')" >&2
            missing=1
        fi
        awk '/=>/ && $3 ~ /^\// {print $3}' <<<"$out" | xargs -r readlink -f >>"$used"
    done
    [[ $missing == 0 ]] || { echo "fetch_peers.sh: add the missing libraries to LIBS" >&2; exit 1; }
    for d in "$tmp"/{usr/lib/x86_64-linux-gnu,lib/x86_64-linux-gnu,usr/lib/ncbi-blast+} "$tmp"/fallback/*; do
        [[ -d $d ]] || continue
        for f in "$d"/*; do
            [[ -f $f && ! -L $f ]] || continue
            grep -qxF "$f" "$used" || rm -f "$f"
        done
        find "$d" -xtype l -delete  # symlinks left dangling
    done
    find "$tmp/fallback" -mindepth 1 -type d -empty -delete
    rm -f "$used"
    echo "$stamp" >"$tmp/.stamp"
    rm -rf "$root"
    mv "$tmp" "$root"
    trap - EXIT
    rm -f "$dest/bundle/peers-root.tar.xz"
fi

# ---------------------------------------------------------------- verify here
run_clean() {  # a tool with nothing inherited but PATH's system part and our libraries
    env -i HOME="${HOME:-/tmp}" PATH="$root/usr/bin:/usr/bin:/bin" \
        LD_LIBRARY_PATH="$(libdirs "$root")" "$@"
}
check() {  # name, expected exit codes, command...
    local name=$1 ok=$2; shift 2
    local out rc=0
    out=$(run_clean "$@" 2>&1) || rc=$?
    if [[ " $ok " != *" $rc "* ]]; then
        echo "fetch_peers.sh: $name failed (exit $rc):" >&2
        echo "$out" | head -5 >&2
        exit 1
    fi
    say "  ok  $(printf '%-16s' "$name") $(grep -m1 . <<<"$out" | head -c 70)"
}
say "verifying from $root (LD_LIBRARY_PATH holds only the tree's folders):"
check bowtie 0 bowtie --version
check bowtie-build 0 bowtie-build --version
check bwa "0 1" bwa
check blastn 0 blastn -version
check makeblastdb 0 makeblastdb -version
check parasail_aligner "0 1" parasail_aligner -h
check samtools 0 samtools --version
ext=$(LD_LIBRARY_PATH="$(libdirs "$root")" ldd "$root"/usr/bin/{bwa,samtools,parasail_aligner,bowtie-align-s,blastn} \
      | awk -v r="$root/" '/=>/ && $3 ~ /^\// && index($3, r) != 1 {print $1}' | sort -u | tr '\n' ' ')
say "  libraries taken from the host: $ext"
say "  (of these, $(ls "$root/fallback" | tr '\n' ' ')are shipped in root/fallback for hosts that lack them)"

# ---------------------------------------------------------------- bundle + data
bundle=$dest/bundle/peers-root.tar.xz
if [[ $want_pack == 1 && ! -f $bundle ]]; then
    say "packing $bundle"
    mkdir -p "$dest/bundle"
    tar -C "$dest" -cf - root | xz -T0 -6 >"$bundle.tmp-$$"
    mv "$bundle.tmp-$$" "$bundle"
fi
if [[ $want_data == 1 ]]; then
    download "$dest/debs" "${DATA[@]}"
fi

size() { [[ -e $1 ]] && du -sh "$1" | cut -f1 || echo "-"; }
say ""
say "sizes: root/ $(size "$root")  bundle/ $(size "$dest/bundle")  debs/ $(size "$dest/debs")  pkgs/ (not carried) $(size "$dest/pkgs")"
if [[ -d $dest/debs ]]; then
    say "data debs: $(cd "$dest/debs" && ls -s --block-size=K ./*.deb | awk '{printf "%s %s  ", $2, $1}' | sed 's#\./##g')"
fi
say ""
say "environment for the unpacked tree (or: source benchmarks/env.sh):"
echo "root=$root"
echo "export PATH=\$root/usr/bin:\$PATH"
echo "export LD_LIBRARY_PATH=\$root/usr/lib/x86_64-linux-gnu:\$root/lib/x86_64-linux-gnu:\$root/usr/lib/ncbi-blast+\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
