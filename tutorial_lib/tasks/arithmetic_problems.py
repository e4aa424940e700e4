"""Arithmetic word problems in GSM8K's style, generated with exact answers (the offline "arithmetic" set).

Each template draws its numbers from a seeded `random.Random`, so `data/tasks/arithmetic.jsonl` is
reproducible from `ARITHMETIC_SEED`; every answer is checked by `evaluate_integer_expression`, an
exact evaluator of integer expressions (no `eval`).
"""

from __future__ import annotations

import ast
import json
import random
from collections.abc import Callable
from fractions import Fraction

__all__ = [
    "ARITHMETIC_TEMPLATES",
    "ARITHMETIC_SEED",
    "ARITHMETIC_COUNT",
    "ARITHMETIC_LARGE_COUNT",
    "ARITHMETIC_SHOTS",
    "make_arithmetic_problems",
    "evaluate_integer_expression",
    "arithmetic_jsonl_text",
]

_NAMES = (
    "Ava",
    "Ben",
    "Chloe",
    "Daniel",
    "Emma",
    "Farid",
    "Grace",
    "Hugo",
    "Isla",
    "Jonas",
    "Kira",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
)
_ITEMS = ("pencils", "stickers", "marbles", "cards", "balloons", "stamps", "buttons", "shells")
_THINGS = ("book", "board game", "scarf", "kite", "backpack", "lamp")


def _problem(template, question, solution_steps, expression, values):
    """One problem record: `steps` pairs an expression of integer literals with its value, in order."""
    steps = [[text, value] for text, value in solution_steps]
    answer = steps[-1][1]
    return {
        "template": template,
        "question": question,
        "values": values,
        "expression": expression,
        "steps": steps,
        "answer": answer,
    }


def _packs(rng):
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    packs, per_pack = rng.randint(3, 9), rng.randint(4, 12)
    total = packs * per_pack
    given = rng.randint(1, total - 1)
    left = total - given
    question = (
        f"{name} buys {packs} packs of {item} with {per_pack} {item} in each pack. "
        f"{name} gives away {given} {item}. How many {item} does {name} have left?"
    )
    solution = (
        f"{packs} packs of {per_pack} {item} make {packs} * {per_pack} = {total} {item}. "
        f"After giving away {given}, {name} has {total} - {given} = {left} {item}."
    )
    return _problem(
        "packs",
        question,
        [(f"{packs} * {per_pack}", total), (f"{total} - {given}", left)],
        f"{packs} * {per_pack} - {given}",
        {"packs": packs, "per_pack": per_pack, "given": given},
    ), solution


def _savings(rng):
    name, thing = rng.choice(_NAMES), rng.choice(_THINGS)
    weekly, weeks = rng.randint(5, 40), rng.randint(3, 12)
    saved = weekly * weeks
    spent = rng.randint(1, saved - 1)
    left = saved - spent
    question = (
        f"{name} saves ${weekly} every week for {weeks} weeks and then spends ${spent} on a {thing}. "
        f"How many dollars does {name} have left?"
    )
    solution = (
        f"{name} saves {weekly} * {weeks} = {saved} dollars. After spending {spent}, "
        f"{name} has {saved} - {spent} = {left} dollars."
    )
    return _problem(
        "savings",
        question,
        [(f"{weekly} * {weeks}", saved), (f"{saved} - {spent}", left)],
        f"{weekly} * {weeks} - {spent}",
        {"weekly": weekly, "weeks": weeks, "spent": spent},
    ), solution


def _sharing(rng):
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    friends, each = rng.randint(2, 8), rng.randint(3, 15)
    total = friends * each
    extra = rng.randint(1, 9)
    final = each + extra
    question = (
        f"{name} has {total} {item} and shares them equally among {friends} friends. "
        f"Each friend then gets {extra} more {item} from a teacher. "
        f"How many {item} does each friend have now?"
    )
    solution = (
        f"Each friend first gets {total} / {friends} = {each} {item}. "
        f"With {extra} more, each friend has {each} + {extra} = {final} {item}."
    )
    return _problem(
        "sharing",
        question,
        [(f"{total} / {friends}", each), (f"{each} + {extra}", final)],
        f"{total} / {friends} + {extra}",
        {"total": total, "friends": friends, "extra": extra},
    ), solution


def _bakery(rng):
    trays, per_tray = rng.randint(3, 9), rng.randint(6, 12)
    baked = trays * per_tray
    morning = rng.randint(1, baked - 2)
    afternoon = rng.randint(1, baked - morning - 1)
    after_morning = baked - morning
    left = after_morning - afternoon
    question = (
        f"A bakery makes {trays} trays of muffins with {per_tray} muffins on each tray. "
        f"It sells {morning} muffins in the morning and {afternoon} muffins in the afternoon. "
        f"How many muffins are left?"
    )
    solution = (
        f"The bakery makes {trays} * {per_tray} = {baked} muffins. After the morning, "
        f"{baked} - {morning} = {after_morning} are left, and after the afternoon "
        f"{after_morning} - {afternoon} = {left}."
    )
    return _problem(
        "bakery",
        question,
        [
            (f"{trays} * {per_tray}", baked),
            (f"{baked} - {morning}", after_morning),
            (f"{after_morning} - {afternoon}", left),
        ],
        f"{trays} * {per_tray} - {morning} - {afternoon}",
        {"trays": trays, "per_tray": per_tray, "morning": morning, "afternoon": afternoon},
    ), solution


def _train(rng):
    speed, hours, extra = rng.randrange(40, 125, 5), rng.randint(2, 6), rng.randint(10, 90)
    first = speed * hours
    total = first + extra
    question = (
        f"A train travels at {speed} km per hour for {hours} hours and then another {extra} km. "
        f"How many kilometres does it travel in total?"
    )
    solution = (
        f"In {hours} hours it travels {speed} * {hours} = {first} km. "
        f"Adding {extra} km gives {first} + {extra} = {total} km."
    )
    return _problem(
        "train",
        question,
        [(f"{speed} * {hours}", first), (f"{first} + {extra}", total)],
        f"{speed} * {hours} + {extra}",
        {"speed": speed, "hours": hours, "extra": extra},
    ), solution


def _change(rng):
    name = rng.choice(_NAMES)
    while True:
        count, price = rng.randint(2, 9), rng.randint(2, 12)
        cost = count * price
        if cost < 100:
            break
    bill = next(bill for bill in (20, 50, 100) if bill > cost)
    change = bill - cost
    question = (
        f"{name} buys {count} notebooks at ${price} each and pays with a ${bill} bill. "
        f"How many dollars of change does {name} get?"
    )
    solution = (
        f"The notebooks cost {count} * {price} = {cost} dollars. "
        f"The change is {bill} - {cost} = {change} dollars."
    )
    return _problem(
        "change",
        question,
        [(f"{count} * {price}", cost), (f"{bill} - {cost}", change)],
        f"{bill} - {count} * {price}",
        {"count": count, "price": price, "bill": bill},
    ), solution


def _ages(rng):
    name = rng.choice(_NAMES)
    age, older, times = rng.randint(6, 15), rng.randint(1, 8), rng.randint(2, 3)
    brother = age + older
    parent = brother * times
    question = (
        f"{name} is {age} years old. {name}'s brother is {older} years older than {name}, and their "
        f"grandmother is {times} times as old as the brother. How old is the grandmother?"
    )
    solution = (
        f"The brother is {age} + {older} = {brother} years old. "
        f"The grandmother is {brother} * {times} = {parent} years old."
    )
    return _problem(
        "ages",
        question,
        [(f"{age} + {older}", brother), (f"{brother} * {times}", parent)],
        f"({age} + {older}) * {times}",
        {"age": age, "older": older, "times": times},
    ), solution


def _garden(rng):
    while True:
        rows, per_row, boxes = rng.randint(3, 9), rng.randint(4, 12), rng.randint(2, 6)
        planted = rows * per_row
        died = planted % boxes or boxes
        if died < planted:
            break
    alive = planted - died
    each = alive // boxes
    question = (
        f"A gardener plants {rows} rows of tomato plants with {per_row} plants in each row. "
        f"{died} of the plants die, and the rest are moved equally into {boxes} boxes. "
        f"How many plants go into each box?"
    )
    solution = (
        f"There are {rows} * {per_row} = {planted} plants. {planted} - {died} = {alive} survive, "
        f"so each box gets {alive} / {boxes} = {each} plants."
    )
    return _problem(
        "garden",
        question,
        [(f"{rows} * {per_row}", planted), (f"{planted} - {died}", alive), (f"{alive} / {boxes}", each)],
        f"({rows} * {per_row} - {died}) / {boxes}",
        {"rows": rows, "per_row": per_row, "died": died, "boxes": boxes},
    ), solution


def _reading(rng):
    name = rng.choice(_NAMES)
    per_day, days = rng.randint(10, 30), rng.randint(2, 7)
    read = per_day * days
    pages = read + rng.randint(5, 200)
    left = pages - read
    question = (
        f"A book has {pages} pages. {name} reads {per_day} pages a day for {days} days. "
        f"How many pages are left to read?"
    )
    solution = f"{name} reads {per_day} * {days} = {read} pages, so {pages} - {read} = {left} pages are left."
    return _problem(
        "reading",
        question,
        [(f"{per_day} * {days}", read), (f"{pages} - {read}", left)],
        f"{pages} - {per_day} * {days}",
        {"pages": pages, "per_day": per_day, "days": days},
    ), solution


def _marbles(rng):
    name = rng.choice(_NAMES)
    red = rng.randint(3, 20)
    blue = 2 * red
    total = red + blue
    lost = rng.randint(1, total - 1)
    left = total - lost
    question = (
        f"{name} has {red} red marbles and twice as many blue marbles. {name} loses {lost} marbles. "
        f"How many marbles does {name} have now?"
    )
    solution = (
        f"{name} has 2 * {red} = {blue} blue marbles, so {red} + {blue} = {total} marbles in all. "
        f"After losing {lost}, {name} has {total} - {lost} = {left}."
    )
    return _problem(
        "marbles",
        question,
        [(f"2 * {red}", blue), (f"{red} + {blue}", total), (f"{total} - {lost}", left)],
        f"{red} + 2 * {red} - {lost}",
        {"red": red, "lost": lost},
    ), solution


def _tickets(rng):
    adult, child = rng.randint(8, 20), rng.randint(3, 10)
    adults, children = rng.randint(1, 4), rng.randint(1, 5)
    adult_cost, child_cost = adults * adult, children * child
    total = adult_cost + child_cost
    question = (
        f"Adult tickets cost ${adult} and child tickets cost ${child}. A family buys {adults} adult "
        f"tickets and {children} child tickets. How many dollars do they pay in total?"
    )
    solution = (
        f"The adult tickets cost {adults} * {adult} = {adult_cost} dollars and the child tickets "
        f"{children} * {child} = {child_cost} dollars. "
        f"Together that is {adult_cost} + {child_cost} = {total} dollars."
    )
    return _problem(
        "tickets",
        question,
        [
            (f"{adults} * {adult}", adult_cost),
            (f"{children} * {child}", child_cost),
            (f"{adult_cost} + {child_cost}", total),
        ],
        f"{adults} * {adult} + {children} * {child}",
        {"adult": adult, "child": child, "adults": adults, "children": children},
    ), solution


def _temperature(rng):
    noon, evening_drop, night_drop = rng.randint(-5, 15), rng.randint(3, 12), rng.randint(2, 10)
    evening = noon - evening_drop
    night = evening - night_drop
    question = (
        f"The temperature was {noon} degrees at noon. It fell {evening_drop} degrees by the evening "
        f"and another {night_drop} degrees overnight. What was the temperature overnight, in degrees?"
    )
    solution = (
        f"By the evening it was {noon} - {evening_drop} = {evening} degrees. "
        f"Overnight it was {evening} - {night_drop} = {night} degrees."
    )
    return _problem(
        "temperature",
        question,
        [(f"{noon} - {evening_drop}", evening), (f"{evening} - {night_drop}", night)],
        f"{noon} - {evening_drop} - {night_drop}",
        {"noon": noon, "evening_drop": evening_drop, "night_drop": night_drop},
    ), solution


def _wages(rng):
    name = rng.choice(_NAMES)
    wage, monday, tuesday = rng.randint(9, 25), rng.randint(2, 8), rng.randint(2, 8)
    hours = monday + tuesday
    pay = hours * wage
    question = (
        f"{name} earns ${wage} an hour and works {monday} hours on Monday and {tuesday} hours on "
        f"Tuesday. How many dollars does {name} earn over the two days?"
    )
    solution = (
        f"{name} works {monday} + {tuesday} = {hours} hours and earns {hours} * {wage} = {pay} dollars."
    )
    return _problem(
        "wages",
        question,
        [(f"{monday} + {tuesday}", hours), (f"{hours} * {wage}", pay)],
        f"({monday} + {tuesday}) * {wage}",
        {"wage": wage, "monday": monday, "tuesday": tuesday},
    ), solution


ARITHMETIC_TEMPLATES: dict[str, Callable] = {
    function.__name__.lstrip("_"): function
    for function in (
        _packs,
        _savings,
        _sharing,
        _bakery,
        _train,
        _change,
        _ages,
        _garden,
        _reading,
        _marbles,
        _tickets,
        _temperature,
        _wages,
    )
}
ARITHMETIC_SEED = 20250601  # the seed of the committed file; changing it changes data/tasks/arithmetic.jsonl
ARITHMETIC_COUNT = 60  # evaluated problems in the committed file
# Evaluated problems of data/tasks/arithmetic_300.jsonl (the "arithmetic-300" set): the same seed, so its
# shots and first 60 problems are those of arithmetic.jsonl, line for line (the generator draws in order).
# A separate file, because the committed runs read every item of arithmetic.jsonl and must keep their 60.
ARITHMETIC_LARGE_COUNT = 300
ARITHMETIC_SHOTS = 4  # few-shot problems in it, generated first and never evaluated


def make_arithmetic_problems(n: int, seed: int) -> list[dict]:
    """`n` distinct arithmetic word problems (2-3 steps, integers, exact answers), reproducible from `seed`.

    Templates take turns in a shuffled order, so every template appears about equally often. Each
    record: `question`, `solution` (the worked steps, ending "The answer is N."), `answer` (int),
    `expression` (one expression of integer literals equal to the answer, "/" exact), `steps`
    ([expression, value] in order), `values` (the template's drawn numbers), `template`."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    rng = random.Random(seed)
    problems, seen = [], set()
    order: list[str] = []
    attempts = 0
    while len(problems) < n:
        attempts += 1
        if attempts > 100 * (n + 10):
            raise ValueError(f"could not draw {n} distinct problems; ask for fewer")
        if not order:
            order = sorted(ARITHMETIC_TEMPLATES)
            rng.shuffle(order)
        template = order.pop()
        problem, working = ARITHMETIC_TEMPLATES[template](rng)
        if problem["question"] in seen:
            continue
        seen.add(problem["question"])
        problem["solution"] = f"{working} The answer is {problem['answer']}."
        problems.append(problem)
    return problems


def evaluate_integer_expression(expression: str) -> Fraction:
    """The exact value of an expression of integer literals with + - * / and parentheses (no names, no
    calls)."""
    operators = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b,
    }

    def value(node):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            return operators[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"only integers, + - * / and parentheses are allowed in {expression!r}")

    return value(ast.parse(expression, mode="eval").body)


def arithmetic_jsonl_text(
    n: int = ARITHMETIC_COUNT, shots: int = ARITHMETIC_SHOTS, seed: int = ARITHMETIC_SEED
) -> str:
    """The text of data/tasks/arithmetic.jsonl: `shots` shot problems then `n` evaluated ones, one JSON per
    line."""
    problems = make_arithmetic_problems(n + shots, seed)
    lines = []
    for index, problem in enumerate(problems):
        is_shot = index < shots
        record = {
            "id": f"arith-shot-{index + 1}" if is_shot else f"arith-{index - shots + 1:03d}",
            "split": "shot" if is_shot else "test",
            **problem,
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"
