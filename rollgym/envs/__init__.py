"""Every env family. Importing this package registers all env ids with Gymnasium.

Each module below registers its ids next to its code and keeps heavy
dependencies out of import time.
"""
