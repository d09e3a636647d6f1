"""Prompt templates of the MATH envs; part of every MATH env's spec hash.

Zero-shot: the problem, then one instruction to reason and put only the final
answer in ``\\boxed{}``. The tool variant adds how to call the Python tool.
Changing any text here changes what a task is, so it bumps the env versions.
"""

from __future__ import annotations

from rollgym.core.errors import ConfigError

BOXED_INSTRUCTION = (
    "Solve the problem step by step. Put your final answer, and only the final answer, "
    "in \\boxed{...}; box it once. Give exact values (fractions, radicals, \\pi) unless the "
    "problem asks for a decimal."
)

TEMPLATES: dict[str, str] = {
    "default": "{problem}\n\n" + BOXED_INSTRUCTION,
    "plain": "{problem}",
}

SYSTEM_PROMPT = "You are a careful mathematician. You solve competition problems and state a single final answer."

TOOL_INSTRUCTION = (
    "You may run Python code to check your work by calling the python tool, for example:\n"
    '<tool_call>{{"name": "python", "arguments": {{"code": "print(2**10)"}}}}</tool_call>\n'
    "The code runs in a fresh sandbox with no network and no files (sympy and numpy may be imported "
    "if installed); only what it prints comes back. You may call the tool at most {max_calls} times. "
    "When you are done, reply without a tool call and put your final answer in \\boxed{{...}}."
)


def format_prompt(problem: str, template: str = "default") -> str:
    """The first observation of a MATH task.

    Example:
        >>> format_prompt("What is $1+1$?").splitlines()[0]
        'What is $1+1$?'
    """
    if template not in TEMPLATES:
        raise ConfigError(f"Unknown prompt_template {template!r}; use one of {', '.join(sorted(TEMPLATES))}.")
    return TEMPLATES[template].replace("{problem}", problem)


def tool_instruction(max_calls: int) -> str:
    """How the tool-integrated variant tells the agent about the python tool."""
    return TOOL_INSTRUCTION.format(max_calls=max_calls)
