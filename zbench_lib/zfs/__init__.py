"""OpenZFS itself: layouts, pools, targets, device safety, prefill, OpenZFS output parsing, the models."""
