#!/bin/sh
# Compiles the spike's DSv2 reader (issue 11) against the jars of the installed PySpark into
# jvm/build/acidstore-jvm.jar. Usage: jvm/build.sh (from anywhere; needs javac 17).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
jars=$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars
rm -rf "$here/build/classes"
mkdir -p "$here/build/classes"
javac -nowarn -d "$here/build/classes" -cp "$jars/*" --release 17 \
    $(find "$here/src" -name '*.java')
jar cf "$here/build/acidstore-jvm.jar" -C "$here/build/classes" .
echo "$here/build/acidstore-jvm.jar"
