"""Sources: where pages come from. See base.py for the interface, router.py for the order."""
