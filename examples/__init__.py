"""Runnable examples (a regular package: an installed distribution that ships a top-level ``examples``
package would otherwise stand in for this folder)."""
