#!/bin/sh
# /opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server HOST:PORT, as health
# checks written for the apache/kafka image run it: Odradek's own probe, which sends
# the same ApiVersions request and exits 0 when the broker answers (the first address
# of the list is asked; other options are ignored).
bootstrap=
while [ "$#" -gt 0 ]; do
    case "$1" in
        --bootstrap-server) bootstrap=${2:-}; shift ;;
        --bootstrap-server=*) bootstrap=${1#*=} ;;
    esac
    shift
done
if [ -n "$bootstrap" ]; then
    exec odradek health --bootstrap "${bootstrap%%,*}"
fi
exec odradek health
