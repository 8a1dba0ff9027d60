; Shared by C and C++ (the C++ grammar names these nodes as C does): struct/union/enum
; definitions, macros, member calls and includes, in the shared capture vocabulary.

(struct_specifier
  name: (type_identifier) @name.definition.struct
  body: (_)) @definition.struct

(union_specifier
  name: (type_identifier) @name.definition.union
  body: (_)) @definition.union

(enum_specifier
  name: (type_identifier) @name.definition.enum
  body: (_)) @definition.enum

; Macros with parameters: #define NAME(args) body (its uses look like calls). Object-like
; `#define NAME value` lines are not rows of their own: a header holds hundreds of them, and
; they are searchable as module-level code.
(preproc_function_def
  name: (identifier) @name.definition.macro) @definition.macro

; Prototypes: int f(int); struct s *g(void); (the implementation is usually in another file:
; search groups them; one inside a function body is dropped by the parser).
(declaration
  declarator: (function_declarator
    declarator: (identifier) @name.definition.function)) @definition.function @declaration

(declaration
  declarator: (_
    declarator: (function_declarator
      declarator: (identifier) @name.definition.function))) @definition.function @declaration

(declaration
  declarator: (_
    declarator: (_
      declarator: (function_declarator
        declarator: (identifier) @name.definition.function)))) @definition.function @declaration

(call_expression
  function: (field_expression
    argument: (_) @qualifier.reference.call
    field: (field_identifier) @name.reference.call))

; Imports.
(preproc_include
  path: (string_literal
    (string_content) @module.import))

(preproc_include
  path: (system_lib_string) @module.import)
