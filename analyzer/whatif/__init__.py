"""What-if: run strategies over a snapshot (``compare``) and measure each outcome (``evaluate``)."""
