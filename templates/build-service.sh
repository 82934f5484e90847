#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx-templates.service's command: the default templates (build-all.sh) into the templates dir
# of the state dir the sbxd configuration names, so that a state-dir set in sbxd.conf is
# followed.
#   build-service.sh SBXD CONFIG
set -eu
[ $# -eq 2 ] || { echo "usage: build-service.sh SBXD CONFIG" >&2; exit 2; }
state=$("$1" --config "$2" --get state-dir)
echo "templates: building into $state/templates (sbxd answers meanwhile)" >&2
exec "$(dirname "$0")/build-all.sh" "$state/templates"
