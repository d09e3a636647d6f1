"""Generated websites (WebGen-v0): seeded domains rendered into server-rendered sites, with held-out ones.

``schema`` and ``kinds`` describe the eleven domain kinds; ``words`` the train and held-out
vocabularies; ``themes`` and ``render`` the eight layout themes; ``domain`` turns a site key
into a spec and a database; ``site`` and ``forms`` serve it; ``mechanisms``, ``changes``,
``answers`` and ``tasks`` make and grade its tasks; ``driver`` and ``reference`` solve them
through the pages; ``env`` is the Gymnasium env; ``stats`` counts it all.
"""
