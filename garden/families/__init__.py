"""Ready-made ModelFamily bases that plugins subclass."""
