; C on top of c_family.scm: functions, typedefs, calls, type uses.

(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name.definition.function)) @definition.function

; Functions returning pointers: struct ledger *ledger_new(...), char **f(...)
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: (identifier) @name.definition.function))) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (pointer_declarator
      declarator: (function_declarator
        declarator: (identifier) @name.definition.function)))) @definition.function

; typedef struct { ... } name;
(type_definition
  type: (struct_specifier !name body: (_))
  declarator: (type_identifier) @name.definition.struct) @definition.struct

(type_definition
  type: (union_specifier !name body: (_))
  declarator: (type_identifier) @name.definition.union) @definition.union

(type_definition
  type: (enum_specifier !name body: (_))
  declarator: (type_identifier) @name.definition.enum) @definition.enum

; Calls: f(), s.f(), p->f().
(call_expression
  function: (identifier) @name.reference.call)

; Type uses: typedef names and struct/union/enum tags.
(type_identifier) @name.reference.type
