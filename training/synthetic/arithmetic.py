"""Calculator-like tools under invented names, and the arithmetic they do.

Offered beside lookups, they are what a request that computes with looked-up values must call: the answer
quotes the tool's result, never a number worked out in the reply. Two take a formula as text (under
different parameter names); one takes two numbers and an operation, and so only serves a formula with one
operation. None of their names has a held-out word (`calc`, `math`, `expression`, ...): a model tuned here
meets the evaluation sets' `calculator` as a new tool.
"""

from __future__ import annotations

import ast
import json
import random
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from agentkit.training.synthetic.family import Family, fam
from agentkit.training.synthetic.turns import Builder, Lookup

ARITHMETIC_FAMILIES: tuple[Family, ...] = (
    fam("evaluate_formula solve_formula formula_solver", "arithmetic",
        "Work out an arithmetic formula (+, -, *, / and brackets) and return the number.",
        [("formula", "text", "the formula to work out, e.g. (12 + 4.5) * 3")], "result=text", "{formula} = {result}",
        [], [], "work out sums"),
    fam("compute quick_compute number_cruncher", "arithmetic",
        "Compute the value of a sum written with numbers, + - * / and parentheses.",
        [("input", "text", "the sum to compute, e.g. 250 / 4 - 7")], "result=text", "{input} = {result}",
        [], [], "compute sums"),
    fam("combine_numbers apply_operation pair_operation", "arithmetic",
        "Apply one operation to two numbers: add, subtract (a - b), multiply or divide (a / b).",
        [("a", "num:0:1:0", "the first number"), ("b", "num:0:1:0", "the second number"),
         ("operation", "enum:add|subtract|multiply|divide", "what to do with them")],
        "result=text", "{a} {operation} {b} = {result}", [], [], "combine numbers"),
)
"""The arithmetic tools (never drawn as lookups: `FAMILIES` does not hold them)."""
FORMULA_FAMILIES = ARITHMETIC_FAMILIES[:2]
"""The arithmetic tools that take a whole formula."""

_OPS = {ast.Add: ("+", "add"), ast.Sub: ("-", "subtract"), ast.Mult: ("*", "multiply"), ast.Div: ("/", "divide")}


def evaluate(formula: str) -> Fraction:
    """The exact value of a formula of numbers, + - * / and brackets."""

    def walk(node: ast.expr) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            op = type(node.op)
            return (left + right if op is ast.Add else left - right if op is ast.Sub
                    else left * right if op is ast.Mult else left / right)
        raise ValueError(f"not a formula of numbers and + - * /: {formula!r}")

    return walk(ast.parse(formula, mode="eval").body)


def number_text(x: Fraction) -> str:
    """A value as the tools write it: a whole number plainly, else at most four decimals, no trailing zeros."""
    if x.denominator == 1:
        return str(x.numerator)
    d = (Decimal(x.numerator) / Decimal(x.denominator)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    text = format(d.normalize(), "f")
    return text if text not in ("-0", "0") or x == 0 else "0"


def operands(formula: str) -> tuple[float | int, float | int, str] | None:
    """(a, b, operation) when the formula is one operation on two numbers, else None."""
    node = ast.parse(formula, mode="eval").body
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS and all(
            isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in (node.left, node.right)):
        assert isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
        a, b = node.left.value, node.right.value
        assert isinstance(a, int | float) and isinstance(b, int | float)
        return a, b, _OPS[type(node.op)][1]
    return None


def spaced(formula: str, rng: random.Random) -> str:
    """The formula as written (spaces around its operators), or half the time without spaces."""
    return formula.replace(" ", "") if rng.random() < 0.5 else formula


def arithmetic_call(b: Builder, formula: str, tool: Family | None = None) -> Lookup:
    """The call of an arithmetic tool that works out `formula` (the conversation's own tool, `b.calc`, or
    one drawn: the two-number tool only where the formula is one operation), with its result."""
    rng = b.rng
    if tool is None:
        tool = b.calc
    pair = operands(formula)
    if tool is None:
        tool = rng.choice(ARITHMETIC_FAMILIES if pair else FORMULA_FAMILIES)
        b.calc = tool
    value = number_text(evaluate(formula))
    written = spaced(formula, rng)
    args: dict[str, Any]
    if tool.params[0].name == "a":
        assert pair is not None, formula
        args = {"a": pair[0], "b": pair[1], "operation": pair[2]}
    else:
        args = {tool.params[0].name: written}
    r = rng.random()
    if r < 0.55:
        result = value
    elif r < 0.8:
        result = json.dumps({"result": json.loads(value)})
    else:
        result = f"{written} = {value}"
    return b.made(tool, args, {"result": value}, result)
