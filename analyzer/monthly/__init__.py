"""The monthly capacity review: forecasts with prediction intervals and days until a pool runs
out (``forecast``)."""
