"""Job orchestration over one executor seam: what a job runs, decided apart from where its tasks run."""
