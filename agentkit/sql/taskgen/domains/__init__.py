"""The declared domains of the generated SQL task set (each module lists its own in `DOMAINS`)."""

from agentkit.sql.taskgen.domains import commerce, culture, people, places, things
from agentkit.sql.taskgen.spec import Domain

ALL_DOMAINS: tuple[Domain, ...] = (*commerce.DOMAINS, *people.DOMAINS, *places.DOMAINS, *things.DOMAINS,
                                   *culture.DOMAINS)
