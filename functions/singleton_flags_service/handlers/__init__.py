"""The functions' Lambda handlers: ``singleton_flags_service.handlers.<name>.handler``."""
