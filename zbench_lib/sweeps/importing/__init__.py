"""Bringing fio results from elsewhere into a sweep store (`zbench import`, issue 49): the files found and
what their paths say, each field checked by the factor registry, the import's plan, the store written whole."""
