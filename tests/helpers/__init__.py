"""What the tests share: a toy search (``toy``), hosts made of network namespaces (``hosts``),
a single-node SLURM (``slurm``) and the searches run on them (``searches``), small data sets
in their official file formats (``datafiles``), a file server that records what it sends
(``fileserver``) and small real file systems (``disks``)."""
