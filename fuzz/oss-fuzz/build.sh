#!/bin/bash -eu
# fuzz/oss-fuzz/build.sh — builds every fuzz target the way OSS-Fuzz and
# ClusterFuzzLite build a project: from the engine's environment, never from
# flags of its own.
#
#   CC, CXX, CFLAGS, CXXFLAGS  the engine's compilers and flags (sanitizer,
#                    coverage instrumentation: -fsanitize=fuzzer-no-link for
#                    libFuzzer, afl-clang-fast's own for AFL++)
#   LIB_FUZZING_ENGINE  what links the engine in (-fsanitize=fuzzer, or the
#                    path of a driver library)
#   SRC, WORK, OUT   sources, scratch space, where the results go
#   FRAMEPROOF_SRC   the checkout (default: $SRC/frameproof)
#   FRAMEPROOF_DEPS_SRC  unpacked release sources of the libraries in
#                    deps.env: zlib/, elfutils/, json-c/ (default:
#                    $SRC/deps-src; fetch-deps fills it)
#
# zlib, libelf and json-c are built first, static, with the same compiler
# and flags (MemorySanitizer needs every library instrumented; the runner
# images lack them), then the targets with meson (-Dfuzz_engine=external,
# linked by $CXX).  $OUT receives every target with its .options file, its
# dictionary and <target>_seed_corpus.zip (corpora/fuzz/<target>,
# corpora/regressions/<target>, and the captured images for
# fuzz_image_unwind and fuzz_async_graph).
REPO="${FRAMEPROOF_SRC:-$SRC/frameproof}"
DEPS_SRC="${FRAMEPROOF_DEPS_SRC:-$SRC/deps-src}"
DEPS="$WORK/deps"
BUILD="$WORK/build"
JOBS="$(nproc)"

for d in zlib elfutils json-c; do
    [ -d "$DEPS_SRC/$d" ] || { echo "build.sh: $DEPS_SRC/$d is missing (run fuzz/oss-fuzz/fetch-deps)" >&2; exit 2; }
done
rm -rf "$DEPS" "$WORK/deps-build" "$BUILD"
mkdir -p "$DEPS/lib/pkgconfig" "$DEPS/include" "$WORK/deps-build"

step() { echo "build.sh: $*"; }

step "zlib (static)"
cp -r "$DEPS_SRC/zlib" "$WORK/deps-build/zlib"
(cd "$WORK/deps-build/zlib" && CC="$CC" CFLAGS="$CFLAGS" ./configure --static --prefix="$DEPS" >/dev/null &&
    make -j"$JOBS" libz.a >/dev/null && make install >/dev/null)

step "libelf (static)"
# ac_cv_zdefs=no: a sanitizer's runtime is linked into programs only, so
# configure's shared-object probes must allow undefined symbols.
mkdir -p "$WORK/deps-build/elfutils"
(cd "$WORK/deps-build/elfutils" &&
    "$DEPS_SRC/elfutils/configure" --prefix="$DEPS" --disable-debuginfod --disable-libdebuginfod \
        --disable-demangler --without-bzlib --without-lzma --without-zstd --disable-nls ac_cv_zdefs=no \
        CC="$CC" CFLAGS="-Wno-error $CFLAGS" CPPFLAGS="-I$DEPS/include" LDFLAGS="$CFLAGS -L$DEPS/lib" \
        >configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
    make -j"$JOBS" -C lib >/dev/null && make -j"$JOBS" -C libelf libelf.a >/dev/null &&
    install -m 644 libelf/libelf.a "$DEPS/lib/" &&
    install -m 644 "$DEPS_SRC/elfutils/libelf/libelf.h" "$DEPS_SRC/elfutils/libelf/gelf.h" \
        "$DEPS_SRC/elfutils/libelf/nlist.h" "$DEPS/include/" &&
    install -m 644 config/libelf.pc "$DEPS/lib/pkgconfig/")

step "json-c (static)"
cmake -S "$DEPS_SRC/json-c" -B "$WORK/deps-build/json-c" -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
    -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX="$DEPS" -DCMAKE_INSTALL_LIBDIR=lib \
    -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON -DBUILD_TESTING=OFF -DDISABLE_WERROR=ON \
    >"$WORK/json-c.log" 2>&1 || { tail -30 "$WORK/json-c.log" >&2; exit 1; }
cmake --build "$WORK/deps-build/json-c" -j "$JOBS" >>"$WORK/json-c.log" 2>&1 || { tail -30 "$WORK/json-c.log" >&2; exit 1; }
cmake --install "$WORK/deps-build/json-c" >>"$WORK/json-c.log" 2>&1

# The targets' link arguments, as a meson array: the C++ flags (sanitizer,
# C++ runtime) and the engine.
link_args=""
for a in ${CXXFLAGS:-} $LIB_FUZZING_ENGINE; do
    link_args="${link_args:+$link_args, }'$a'"
done

step "fuzz targets"
PKG_CONFIG_PATH="$DEPS/lib/pkgconfig" meson setup "$BUILD" "$REPO" --buildtype=plain -Dwerror=false \
    -Dprefer_static=true -Dtests=false -Dfuzz=true -Dfuzz_engine=external -Dfuzz_link_args="[$link_args]" \
    >"$WORK/meson-setup.log" 2>&1 || { tail -30 "$WORK/meson-setup.log" >&2; exit 1; }
mapfile -t targets < <(ninja -C "$BUILD" -t targets all | sed -n 's|^fuzz/\(fuzz_[a-z0-9_]*\): .*|\1|p' | sort -u)
[ "${#targets[@]}" -gt 0 ] || { echo "build.sh: meson defined no fuzz target" >&2; exit 1; }
ninja -C "$BUILD" "${targets[@]/#/fuzz/}" >"$WORK/ninja.log" 2>&1 || { tail -40 "$WORK/ninja.log" >&2; exit 1; }

step "installing ${#targets[@]} targets into $OUT"
mkdir -p "$OUT"
for t in "${targets[@]}"; do
    cp "$BUILD/fuzz/$t" "$OUT/"
    [ -f "$REPO/fuzz/$t.options" ] && cp "$REPO/fuzz/$t.options" "$OUT/"
    [ -f "$REPO/fuzz/$t.dict" ] && cp "$REPO/fuzz/$t.dict" "$OUT/"
    seeds="$WORK/seeds/$t"
    rm -rf "$seeds" && mkdir -p "$seeds"
    for d in "$REPO/corpora/fuzz/$t" "$REPO/corpora/regressions/$t"; do
        [ -d "$d" ] && find "$d" -maxdepth 1 -type f -exec cp {} "$seeds/" \;
    done
    if [ "$t" = fuzz_image_unwind ] || [ "$t" = fuzz_async_graph ]; then
        # Captured images share file names across versions: prefix them.
        for img in "$REPO"/corpora/images/*/*.fpimg; do
            cp "$img" "$seeds/$(basename "$(dirname "$img")")-$(basename "$img")"
        done
    fi
    rm -f "$OUT/${t}_seed_corpus.zip"
    if [ -n "$(ls -A "$seeds")" ]; then
        (cd "$seeds" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    fi
done
step "done: ${targets[*]}"
