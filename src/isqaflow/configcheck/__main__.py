"""``python -m isqaflow.configcheck <config files>``: their syntax (file, line, column), a
target given after ``--configfile``, a missing file -- what Snakemake, which loads the files
before the workflow, reports without naming the file or the line."""

from isqaflow.configcheck.files import main

raise SystemExit(main())
