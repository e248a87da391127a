"""Airflow triggers of the provider."""
