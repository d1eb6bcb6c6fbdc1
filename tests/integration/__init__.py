"""Integration tier: the write path, the handlers and the example application on DynamoDB Local."""
