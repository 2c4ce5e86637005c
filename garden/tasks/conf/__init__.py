"""The Hydra configs of garden's own tasks (``task/<name>.yaml``), a search-path entry of the
built-in tasks plugin (``pkg://garden.tasks.conf``)."""
