"""Task families: data -> batches, loss, metrics and readable predictions.

A family maps each task name to a Task class by import path (``ModelFamily.tasks``), so a
third-party model gets a core task such as image classification for free.
"""
