#!/bin/bash -eu
# OSS-Fuzz's build step: the project's one fuzz build script.
exec "$SRC/frameproof/fuzz/oss-fuzz/build.sh"
