"""The sandbox's way out: a proxy per session that lets a connection through only when the
network policy allows its host (proxy.py, addresses.py), and the policy that decides
(policy.py). decisions.py is the seam between the two."""
