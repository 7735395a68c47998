#!/usr/bin/env python3
"""Collective or not, at a glance: every routine a header in include/mft/
declares at namespace scope says, in the comment just above it (or above the
group of declarations it belongs to), whether it is collective and over which
communicator, the way PETSc's manual pages do: a line with "Collective" (on
what) or "Not collective". And the kernel headers include no MPI layout, option
table or PETSc object: kernels are plain loops over doubles.

  python3 tests/docs/collective.py TOP          check the headers under TOP
  python3 tests/docs/collective.py --self-test  the check fails on bad headers
"""
import pathlib
import re
import sys

# A declaration at namespace scope: a return type at column 0, then a name and
# its argument list. Class members are indented and belong to their type.
DECL = re.compile(r'^(?:inline\s+|static\s+|template\s*<[^>]*>\s*)*'
                  r'(?:const\s+)?[A-Za-z_][\w:<>,\s*&]*?[\s*&]'
                  r'([A-Za-z_]\w*)\s*\(')
SAYS = re.compile(r'\b(collective|not collective)\b', re.IGNORECASE)
KEYWORDS = {'if', 'for', 'while', 'return', 'switch', 'sizeof'}
# What a kernel header may include: the kernels' own headers and the standard
# library; PETSc only for its scalar types.
KERNEL_INCLUDE = re.compile(r'#include\s+[<"](mft/kernels/[\w.]+|petscsys\.h|[a-z_]+(\.h)?)[>"]')
KERNEL_FORBIDDEN = re.compile(r'mft/(layout|settings|flow|files|studies|commands|analyses)/|petsc(vec|mat|ts|ksp)\.h|mpi\.h')


def comment_above(lines, i):
    """The comment block above line i, through a group of declarations that
    share it (consecutive declarations with no blank line between)."""
    j = i - 1
    while j >= 0 and lines[j].strip() and not lines[j].lstrip().startswith('//'):
        j -= 1  # a declaration of the same group, or a declaration's wrapped line
    block = []
    while j >= 0 and lines[j].lstrip().startswith('//'):
        block.append(lines[j])
        j -= 1
    return '\n'.join(reversed(block))


HEADER_WIDE = re.compile(r'every routine (here|of this header) is not collective', re.IGNORECASE)


def unmarked(text):
    """The names declared at namespace scope in text whose comments do not say
    whether they are collective. A header whose opening comment says "Every
    routine here is not collective" speaks for all of them."""
    lines = text.split('\n')
    opening = []
    for line in lines:
        if not line.startswith('//'):
            break
        opening.append(line[2:].strip())
    if HEADER_WIDE.search(' '.join(opening)):
        return []
    missing, depth = [], 0
    for i, line in enumerate(lines):
        code = line.split('//')[0]
        m = DECL.match(code)
        if m and depth <= 1 and m.group(1) not in KEYWORDS and not code.startswith(('struct', 'class', 'using', 'enum', '#')):
            if not SAYS.search(comment_above(lines, i)):
                missing.append(m.group(1))
        depth += code.count('{') - code.count('}')
        if re.match(r'\s*namespace\s+\w+\s*\{', code):
            depth -= 1  # a namespace's body is namespace scope
    return missing


def kernel_includes(text):
    return [line for line in text.split('\n') if line.startswith('#include') and KERNEL_FORBIDDEN.search(line)]


def check(top):
    bad = 0
    headers = sorted(pathlib.Path(top, 'include', 'mft').rglob('*.hpp'))
    routines = 0
    for header in headers:
        text = header.read_text()
        names = unmarked(text)
        routines += sum(1 for line in text.split('\n') if DECL.match(line.split('//')[0]))
        for name in names:
            print(f'{header.relative_to(top)}: {name} does not say whether it is collective')
            bad += 1
        if header.parent.name == 'kernels':
            for line in kernel_includes(text):
                print(f'{header.relative_to(top)}: a kernel header includes {line.split()[1]}')
                bad += 1
    if bad:
        print(f'collective.py: {bad} problems in {len(headers)} headers')
        return 1
    print(f'collective.py: {len(headers)} headers; every routine says whether it is collective; kernel headers include only kernels')
    return 0


def self_test():
    good = ('namespace mft {\n// Adds. Not collective.\nint Add(int a, int b);\n\n'
            '// Sums over comm. Collective on comm.\nPetscErrorCode Sum(MPI_Comm comm,\n'
            '                   double *x);\nPetscErrorCode SumToo(MPI_Comm comm);\n}\n')
    bad = ('namespace mft {\n// Adds two numbers.\nint Add(int a, int b);\n'
           'struct S {\n  int member(int);\n};\n}\n')
    assert unmarked(good) == [], unmarked(good)
    assert unmarked(bad) == ['Add'], unmarked(bad)
    assert unmarked('// Sums. Every routine here is not\n// collective.\n' + bad) == []
    assert kernel_includes('#include "mft/layout/grid.hpp"\n#include <cmath>\n') == ['#include "mft/layout/grid.hpp"']
    assert kernel_includes('#include "mft/kernels/simd.hpp"\n#include <petscsys.h>\n') == []
    print('collective.py: self-test passed')
    return 0


if __name__ == '__main__':
    if len(sys.argv) == 2 and sys.argv[1] == '--self-test':
        sys.exit(self_test())
    sys.exit(check(sys.argv[1]))
