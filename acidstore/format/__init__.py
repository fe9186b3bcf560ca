"""Hive's ACID format: names, write-id lists, directory selection, partitions, ORC."""
