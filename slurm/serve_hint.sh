#!/bin/bash
# Print the commands that open a live view of this job's run (nord serve on the login node,
# reached through an SSH tunnel); the sbatch templates call it with the job's command.
#
#   bash slurm/serve_hint.sh .venv/bin/nord run --journal runs/async.db ...
set -u
journal=runs
previous=
for argument in "$@"; do
    case "$previous" in --journal) journal=$argument ;; esac
    case "$argument" in --journal=*) journal=${argument#--journal=} ;; esac
    case "$argument" in *.db) [ "$previous" = resume ] && journal=$argument ;; esac
    previous=$argument
done
case "$journal" in /*) ;; *) journal="${SLURM_SUBMIT_DIR:-$PWD}/$journal" ;; esac
login=${SLURM_SUBMIT_HOST:-$(hostname)}
port=${NORD_SERVE_PORT:-8265}
echo "nord: to watch this run live, on $login run:"
echo "nord:   cd ${SLURM_SUBMIT_DIR:-$PWD} && .venv/bin/nord serve $journal --port $port"
echo "nord: then on your own machine:"
echo "nord:   ssh -N -L $port:127.0.0.1:$port ${USER:-you}@$login   # and open http://127.0.0.1:$port/"
