"""Transactions and the one write pipeline: plan -> units -> executor -> publish."""
