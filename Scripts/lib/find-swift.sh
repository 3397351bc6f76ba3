# Sourced by Scripts/setup and Scripts/test: puts the Swift toolchain on PATH when it is
# installed but not on PATH (as on a fresh Debian machine with the toolchain in /opt).
if ! command -v swift >/dev/null 2>&1; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin /usr/local/swift/usr/bin; do
        if [ -x "$candidate/swift" ]; then
            export PATH="$candidate:$PATH"
            break
        fi
    done
fi
command -v swift >/dev/null 2>&1 || { echo "the Swift toolchain is not installed (https://swift.org/install)" >&2; exit 1; }
