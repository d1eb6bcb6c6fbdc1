"""The local runner (``make run``, ``python -m local``): the deployed API on 127.0.0.1, with API Gateway's part, the
functions, DynamoDB (in memory, or DynamoDB Local), the scheduler, change events and the console's pages."""
