#!/bin/sh
# As n8nio/n8n's: arguments are n8n's (`start`, `worker`, `webhook`); none runs `n8n`.
if [ "$#" -gt 0 ]; then
  exec n8n "$@"
fi
exec n8n
