"""Where commands run: the host interface (local, SSH), the lab VM and its image, disk models."""
