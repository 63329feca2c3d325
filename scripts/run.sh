#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make run: start wharfd on the embedded default and print how to reach it.
set -euo pipefail
build=${1:-build}; data=${2:-./data}; listen=${3:-127.0.0.1:9000}
mkdir -p "$data"
export WHARF_ACCESS_KEY=${WHARF_ACCESS_KEY:-wharfadmin}
export WHARF_SECRET_KEY=${WHARF_SECRET_KEY:-wharfadmin-secret}
cat <<MSG
wharfd: endpoint http://$listen   data $data
  export AWS_ACCESS_KEY_ID=$WHARF_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$WHARF_SECRET_KEY AWS_DEFAULT_REGION=us-east-1
  /usr/bin/aws --endpoint-url http://$listen s3 ls
  unix socket (RDMA over shm): $data/wharfd.sock
  $build/wharf verify --endpoint http://$listen --unix-socket $data/wharfd.sock
MSG
exec "$build/wharfd" serve --data "$data" --listen "$listen"
