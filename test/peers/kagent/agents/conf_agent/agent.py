"""A kagent ADK agent for conformance tests: kagent's own OpenAI model type pointed at the fake
model (FAKE_MODEL_URL), kagent's approval callback on two tools, and a tool log (TOOL_LOG) that
records which tools really executed."""

import json
import os

from google.adk.agents import LlmAgent
from kagent.adk._approval import make_approval_callback, strip_confirmation_parts_callback
from kagent.adk.models._openai import OpenAI

TOOL_LOG = os.environ.get("TOOL_LOG", "")


def _ran(name: str, args: dict) -> None:
    if TOOL_LOG:
        with open(TOOL_LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": name, "args": args}) + "\n")


def add_numbers(a: int, b: int) -> dict:
    """Adds two numbers."""
    _ran("add_numbers", {"a": a, "b": b})
    return {"sum": a + b}


def check_status(service: str) -> dict:
    """Reports a service's status."""
    _ran("check_status", {"service": service})
    return {"status": "ok"}


def echo_text(text: str) -> dict:
    """Echoes text back."""
    _ran("echo_text", {"text": text})
    return {"echo": text}


root_agent = LlmAgent(
    name="conf_agent",
    model=OpenAI(type="openai", model="fake", base_url=os.environ["FAKE_MODEL_URL"], api_key="dummy"),
    instruction="Use the tools you are given.",
    tools=[add_numbers, check_status, echo_text],
    before_tool_callback=make_approval_callback({"add_numbers", "check_status"}),
    before_model_callback=[strip_confirmation_parts_callback],
)
