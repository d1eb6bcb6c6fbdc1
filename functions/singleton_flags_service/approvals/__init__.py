"""Change requests: protected flags change only with other principals' approvals, or by break-glass."""
