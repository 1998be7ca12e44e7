"""dpaudit's tests (a regular package: an installed distribution that ships a top-level ``tests``
package, as diffprivlib 0.6.6 does, would otherwise shadow this namespace package)."""
