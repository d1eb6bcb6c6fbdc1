"""Cold floor of client_create.py: import boto3 and create a DynamoDB client, nothing else."""

import boto3

CLIENT = boto3.client("dynamodb")
