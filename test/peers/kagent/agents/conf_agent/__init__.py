from . import agent  # noqa: F401  (ADK's AgentLoader imports the package and reads agent.root_agent)
