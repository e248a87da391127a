"""The maintain job's action names (its subcommands): standard library only, for its argument parser."""

EXPIRE_SNAPSHOTS = "expire-snapshots"
REMOVE_ORPHAN_FILES = "remove-orphan-files"
REWRITE_POSITION_DELETES = "rewrite-position-deletes"
REWRITE_MANIFESTS = "rewrite-manifests"
CONVERT_EQUALITY_DELETES = "convert-equality-deletes"
