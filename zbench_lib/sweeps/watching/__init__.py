"""Front ends that drive or watch a sweep: the headless notebook, its signals, progress views."""
