"""Maintenance windows: their schedules' deliveries, and the cron expressions they are made of."""
