; C++ on top of c_family.scm: classes, methods, functions, instantiations, type uses.
; Namespaces are not definitions: qualified names leave them out.

(class_specifier
  name: (type_identifier) @name.definition.class
  body: (_)) @definition.class

(type_definition
  type: (struct_specifier !name body: (_))
  declarator: (type_identifier) @name.definition.struct) @definition.struct

; Functions and in-class methods, also returning pointers or references.
(function_definition
  declarator: (function_declarator
    declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name.definition.function)) @definition.function

(function_definition
  declarator: (_
    declarator: (function_declarator
      declarator: [(identifier) (field_identifier) (operator_name)] @name.definition.function))) @definition.function

; In-class method declarations (void f(); virtual int g() = 0;), also returning pointers or
; references: declarations, grouped with their out-of-class definition.
(field_declaration
  declarator: (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)] @name.definition.function)) @definition.function @declaration

(field_declaration
  declarator: (_
    declarator: (function_declarator
      declarator: [(field_identifier) (operator_name)] @name.definition.function))) @definition.function @declaration

; In-class destructor and operator declarations (constructors match c_family.scm's prototypes).
(declaration
  declarator: (function_declarator
    declarator: [(destructor_name) (operator_name)] @name.definition.function)) @definition.function @declaration

; Out-of-class definitions: Foo::bar(), Foo::~Foo(), A::B::f(); the scope is the owner.
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: [(identifier) (destructor_name) (operator_name)] @name.definition.function) @scope.definition.function)) @definition.function

(function_definition
  declarator: (_
    declarator: (function_declarator
      declarator: (qualified_identifier
        name: [(identifier) (operator_name)] @name.definition.function) @scope.definition.function))) @definition.function

(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: (qualified_identifier
        name: [(identifier) (destructor_name) (operator_name)] @name.definition.function)) @scope.definition.function)) @definition.function

; Calls: f(), obj.m(), p->m(), Type::m(), ns::f<T>().
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (qualified_identifier
    scope: (_) @qualifier.reference.call
    name: (identifier) @name.reference.call))

(call_expression
  function: (template_function
    name: (identifier) @name.reference.call))

(call_expression
  function: (qualified_identifier
    scope: (_) @qualifier.reference.call
    name: (template_function
      name: (identifier) @name.reference.call)))

; Instantiations: new Foo, new ns::Foo(), Foo{...}.
(new_expression
  type: (type_identifier) @name.reference.new)

(new_expression
  type: (qualified_identifier
    scope: (_) @qualifier.reference.new
    name: (type_identifier) @name.reference.new))

(compound_literal_expression
  type: (type_identifier) @name.reference.new)

(compound_literal_expression
  type: (qualified_identifier
    scope: (_) @qualifier.reference.new
    name: (type_identifier) @name.reference.new))

; Type uses anywhere: declarations, parameters, returns, base classes, template args.
(type_identifier) @name.reference.type

(qualified_identifier
  scope: (_) @qualifier.reference.type
  name: (type_identifier) @name.reference.type)
