#!/bin/sh
# Builds a local Python base image from Debian packages, for hosts that reach no image
# registry: `docker/build-base-image.sh [IMAGE]` (default localhost/odradek-python-base).
# It carries this host's apt sources, so keep it local: never push it.
# Does nothing when the image exists already.
set -eu
image="${1:-localhost/odradek-python-base:bookworm}"
if podman image exists "$image"; then
  echo "base image $image exists"
  exit 0
fi
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
echo "building base image $image with mmdebstrap from $sources"
mmdebstrap --variant=minbase --mode=root --format=tar \
  --include=python3,python3-pip,python3-venv,ca-certificates \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --aptopt='Acquire::Check-Date "false"' \
  bookworm - "$sources" \
  | podman import \
      --change 'CMD ["python3"]' \
      --change 'ENV LANG=C.UTF-8' \
      - "$image"
