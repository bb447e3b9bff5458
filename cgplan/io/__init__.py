"""Every byte cgplan reads or writes (the target home of the project's file formats).

Today it holds the one hardened reader, `cgplan.io.files`; the format modules move here later.
"""
